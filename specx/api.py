"""The Python API: prepare target and drafter, build the prompt, run the loop."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .engine.prompt import prompt_ids  # noqa: F401  (the one way to a prompt's ids; bench and tests take it here)
from .engine.types import Sampling
from .errors import UsageError
from .options import ModelOptions, RunOptions


@dataclass
class Pair:
    """A loaded target and its drafter, plus the sentence that explains the drafter choice."""

    target: object
    drafter: object
    k: int
    explanation: str
    costs: dict = field(default_factory=dict)   # greedy or not → the cost model of the last `auto` answer
    measured_key: dict | None = None   # where earlier processes' costs for this pair are kept (measured.py)
    note: str = ""                     # what the last policy() started from, when an earlier process measured it
    k_chosen: bool = True              # False: k was not given (prepare(k=None)), so it depends on the policy

    def policy(self, name: str, confidence: float, sampling: Sampling, guard: bool = False):
        """One answer's draft policy (`guard`: a tuned policy that `auto` chose, policy.Guarded). `auto`
        starts from what this pair's previous answer with the same kind of sampling measured (verify
        costs, drafting step, calibration), else from what an earlier process saved for this pair and
        machine (measured.py): the first rounds draft at once instead of measuring. `note` then says so."""
        from .policy.costmodel import CostModel
        from .policy.policy import make

        cfg = self.target.model.config
        moe = bool(getattr(cfg, "num_local_experts", 0) or getattr(cfg, "num_experts", 0))
        previous, self.note = self.costs.get(sampling.greedy), ""
        if previous is None and self.measured_key is not None and name == "auto":   # only auto reads costs
            from .policy import measured

            previous, self.note = measured.load_with_note(self.measured_key, sampling.greedy)   # an earlier process
        cost = CostModel.following(previous, moe=moe)
        if name == "auto":
            self.costs[sampling.greedy] = cost
        return make(name, self.draft_tokens(name), confidence, cost, guard=guard)

    @property
    def context(self) -> int:
        """Tokens both models' contexts hold (the drafter's counts only when it drafts)."""
        return min(self.target.max_context, self.drafter.max_context) if self.k else self.target.max_context

    def draft_tokens(self, policy: str) -> int:
        """The k a policy runs with: the one given to prepare, else what `specx run` takes without -k
        (policy.draft_cap: up to AUTO_K_MAX under `auto`, DEFAULT_K otherwise), within the memory plan's k."""
        from .policy.policy import DEFAULT_K, draft_cap

        return self.k if self.k_chosen or not self.k else min(self.k, draft_cap(DEFAULT_K, policy, False))

    def remember(self, greedy: bool) -> None:
        """Keep the last `auto` answer's costs for later processes (a cache: a failed write is skipped)."""
        from .policy import measured

        if self.measured_key is not None and greedy in self.costs:
            measured.save(self.measured_key, greedy, self.costs[greedy])


def _say(notify: Callable[[str], None] | None, text: str) -> None:
    if notify:
        notify(text)


def prepare(options: ModelOptions, notify: Callable[[str], None] | None = None) -> Pair:
    """Resolve, plan memory for, and load the target and the drafter (_prepare), then give the heap what loading
    freed back to the system (the memory plan does not count it)."""
    from .memory.probe import release_freed_heap

    pair = _prepare(options, notify)
    release_freed_heap()
    return pair


def _prepare(options: ModelOptions, notify: Callable[[str], None] | None = None) -> Pair:
    """Resolve, plan memory for, and load the target and the drafter; the drafter's tokenizer is checked first.

    The memory plan (placement.py) sets the target's precision and placement: `quant` = auto keeps
    the target's weights where they fit and quantizes only where they do not; `mem_budget`
    (`gpu=6GiB,cpu=16GiB`) simulates a smaller machine. The drafter gets the fastest CPU kernel
    (`draft_quant` auto) and `draft_vocab` trims its output layer (None = automatic, 0 = all).
    `k` None: each policy's default, as `specx run` without -k (Pair.draft_tokens)."""
    from .policy import measured
    from .decoder import vocabtrim
    from .drafters.compat import check_drafter
    from .engine.draft import NoDrafter
    from .drafters.model import ModelDrafter
    from .drafters.hybrid import HybridDrafter
    from .models.resolve import dtype_name, eos_ids, load_lm, load_tokenizer, same_tokenizer
    from .drafters.ngram import NgramDrafter
    from .memory.placement import attach_experts, plan_run
    from .policy.policy import DEFAULT_K, draft_cap
    from .policy.tuned import SELF_COPY, SPECIAL, split_hybrid
    from .memory.variant import Ask, source_for
    from .state.limits import runtime_quant

    o, drafter = options, options.drafter
    chosen, k = o.k is not None, draft_cap(DEFAULT_K, "auto", False) if o.k is None else o.k   # None: the most any policy may take
    source = source_for(o.model, Ask(o.quant, o.dtype, o.mem_budget))
    (choice, hybrid), auto_note = split_hybrid(drafter), ""
    if drafter == "auto" and k != 0:   # a picked model drafter also copies from the context where it can
        from .drafters.auto import pick

        choice, auto_note = pick(source, dtype_name(o.dtype))
        hybrid = choice != "ngram"
    choice = "none" if k == 0 else choice
    draft_source = None if choice in SPECIAL else source_for(choice, Ask(o.draft_quant, o.draft_dtype or o.dtype,
                                                                                o.mem_budget))
    draft_tokens = 0   # the drafter tokenizer's length where it was built for the check (else the target's)
    shared = draft_source is not None and same_tokenizer(source, draft_source)   # one tokenizer: nothing to check
    if draft_source is not None and not shared:
        target_tok, draft_tok = load_tokenizer(source), load_tokenizer(draft_source)
        check_drafter(target_tok, draft_tok, eos_ids(source, target_tok), eos_ids(draft_source, draft_tok))
        draft_tokens = len(draft_tok)
    may_self = choice == "self" or (drafter == "auto" and choice == "ngram")   # auto: where the target can
    applied = plan_run(source, draft_source, k, o.dtype, runtime_quant(o.quant), o.mem_budget, o.allow_disk_offload,
                       o.moe_offload, runtime_quant(o.draft_quant), notify,
                       self_draft=may_self or choice == SELF_COPY, self_copy=choice == SELF_COPY,
                       shares_tokenizer=shared)
    _say(notify, applied.note)
    if applied.plan.k_cap < k and choice != "none":   # SpecMemo: speculation shrinks before the target moves
        _say(notify, f"note: k lowered from {k} to {applied.plan.k_cap}, the most this memory plan leaves room for")
        k = applied.plan.k_cap
    target = load_lm(source, applied.target.dtype, applied.target.weights, placement=applied.target)
    target.placement = applied.summary
    if applied.moe_budget:
        target.experts = attach_experts(target, applied.moe_budget, notify)
    if choice == SELF_COPY:
        return _self_copy_pair(target, source, k, chosen, hybrid, o.draft_vocab, notify)
    if may_self and (choice == "self" or drafts_itself(target)):
        return _self_pair(target, source, k, chosen, hybrid or drafter == "auto", auto_note if drafter == "auto" else "",
                          o.draft_vocab)
    if draft_source is None:
        why = "plain decoding" if choice == "none" else "prompt lookup, no model" + (
            f"; {auto_note}" if auto_note else "")
        pair = Pair(target, NoDrafter() if choice == "none" else NgramDrafter(), 0 if choice == "none" else k,
                    f"drafter: {choice} ({why})", k_chosen=chosen)
        if choice == "ngram":
            pair.measured_key = measured.make_key(target, source.path, "ngram")
        return pair
    d = applied.drafter
    keep = 0 if d.dispatched else vocabtrim.choose_keep(o.draft_vocab, draft_tokens or len(target.tokenizer),
                                                        d.weights.startswith("native"))
    draft_lm = load_lm(draft_source, d.dtype if d.dispatched else (o.draft_dtype or o.dtype), d.weights, keep,
                       placement=d, tokenizer=target.tokenizer if shared else None)
    ratio = target.n_params / max(draft_lm.n_params, 1)
    if ratio < 1:
        _say(notify, f"warning: the drafter ({draft_lm.n_params / 1e6:.0f}M parameters) is larger than the "
                     f"target ({target.n_params / 1e6:.0f}M); speculation will likely be slower")
    usable = min(len(target.tokenizer), target.vocab_size, draft_lm.vocab_size)
    window = ModelDrafter.CPU_WINDOW if draft_lm.device.type == "cpu" else 0
    model_drafter = ModelDrafter(draft_lm, target.vocab_size, usable, window)
    draft = HybridDrafter(NgramDrafter(), model_drafter) if hybrid else model_drafter
    copies = "; copies from the context instead where it already holds the continuation" if hybrid else ""
    return Pair(target, draft, k,
                f"drafter: {draft.name} (same tokenizer, {ratio:.1f}× smaller than {target.name}; "
                f"{draft_lm.kernels.removeprefix('kernels: ')}{copies}" + (f"; {auto_note})" if auto_note else ")"),
                measured_key=measured.make_key(target, source.path, "hybrid" if hybrid else "model", draft_lm,
                                               draft_source.path), k_chosen=chosen)


def drafts_itself(target) -> bool:
    """Whether the target can draft for itself (self-speculation): specx's lean or dense decoder, whose
    forward leaves layers out; transformers' models cannot."""
    from .decoder.lm import LeanLM

    return isinstance(target, LeanLM)


def _self_pair(target, source, k: int, chosen: bool, hybrid: bool, auto_note: str, draft_vocab: int | None) -> Pair:
    """The target as its own drafter (drafters/self.py), copying from the context too where `hybrid`."""
    from .drafters.hybrid import HybridDrafter
    from .drafters.ngram import NgramDrafter
    from .drafters.self import for_target, lean_decoder
    from .policy import measured, selfskip

    if not drafts_itself(target):
        raise UsageError(f"--drafter self needs specx's own decoder, and {target.name} runs on transformers' model "
                         f"(its architecture or format is not one the lean decoder reads)",
                         "use --drafter ngram or a model drafter (--drafter MODEL)")
    from .decoder import vocabtrim

    usable = min(len(target.tokenizer), target.vocab_size)
    keep = vocabtrim.choose_keep(draft_vocab, usable) if lean_decoder(target) else 0   # the CUDA decoder: all rows
    drafter, said = for_target(target, usable, selfskip.make_key(target, source.path, keep), draft_vocab=keep)
    draft = HybridDrafter(NgramDrafter(), drafter) if hybrid else drafter
    copies = "; copies from the context instead where it already holds the continuation" if hybrid else ""
    why = f"; {auto_note}, so the target drafts for itself" if auto_note else ""
    return Pair(target, draft, k, f"drafter: {draft.name} (self-speculation: the target {said}{copies}{why})",
                measured_key=measured.make_key(target, source.path, draft.name), k_chosen=chosen)


def _self_copy_pair(target, source, k: int, chosen: bool, hybrid: bool, draft_vocab: int | None, notify) -> Pair:
    """The target drafting with a 2-bit copy of its own layers (drafters/selfcopy.py), copying from the
    context too where `hybrid`."""
    from .drafters import selfcopy
    from .drafters.hybrid import HybridDrafter
    from .drafters.ngram import NgramDrafter
    from .policy import measured

    usable = min(len(target.tokenizer), target.vocab_size)
    drafter, said = selfcopy.for_target(target, source.path, usable, draft_vocab, notify)
    draft = HybridDrafter(NgramDrafter(), drafter) if hybrid else drafter
    copies = "; copies from the context instead where it already holds the continuation" if hybrid else ""
    return Pair(target, draft, k, f"drafter: {draft.name} ({said}{copies})",
                measured_key=measured.make_key(target, source.path, draft.name), k_chosen=chosen)


def validate(pair: Pair, ids: list[int]) -> None:
    """Refuse a prompt the models' contexts cannot hold, before any work."""
    limits = [("target", pair.target.max_context)] + ([("drafter", pair.drafter.max_context)] if pair.k else [])
    for who, limit in limits:
        if len(ids) >= limit:
            raise UsageError(f"the prompt has {len(ids)} tokens but the {who}'s context holds {limit}",
                             "shorten the prompt")


def stream(model: "Pair | ModelOptions", prompt: str, run: RunOptions = RunOptions(), *,
           notify: Callable[[str], None] | None = None, stop_event: threading.Event | None = None):
    """Speculative generation as events: Round … Done. The output equals the target's own.
    `model` is a loaded Pair (`prepare`, `specx.load`: its models and measured costs are reused) or
    the options to load one with."""
    pair = model if isinstance(model, Pair) else prepare(model, notify)
    _say(notify, pair.explanation + (f"; {pair.target.kernels}" if pair.target.kernels else ""))
    ids = prompt_ids(pair.target.tokenizer, prompt, run.system, run.raw)
    validate(pair, ids)
    return generation(pair, ids, run, stop_event=stop_event, notify=notify, reuse=None if run.reuse else 0)


def generation(pair: Pair, ids: list[int], run: RunOptions, *, stop_event: threading.Event | None = None,
               reuse: int | None = 0, notify: Callable[[str], None] | None = None):
    """The engine run of one answer to prompt `ids` (validated) with `run`'s options; `reuse`: at most how many
    of the first ids to keep from the pair's caches (None: as many as they hold; engine/loop.py's reused).
    `stream` and `specx serve` both answer through here, so one request gives the same text either way."""
    from .engine.loop import Generation

    sampling = run.sampling
    policy = pair.policy(run.draft_policy, run.confidence, sampling, run.guard)
    if pair.note:
        _say(notify, pair.note)
    if run.tree and getattr(pair.target, "trees", ""):
        _say(notify, f"token trees off: {pair.target.trees}")
    return Generation(pair.target, pair.drafter, ids, k=policy.k_max, max_tokens=run.max_tokens, sampling=sampling,
                      stop_strings=run.stop, stop=stop_event, policy=policy, tree=run.tree, reuse=reuse,
                      on_done=(lambda: pair.remember(sampling.greedy)) if run.draft_policy == "auto" else None)


def generate(model: "Pair | ModelOptions", prompt: str, run: RunOptions = RunOptions(), **keywords) -> str:
    """The whole completion as one string."""
    return "".join(getattr(event, "text", "") for event in stream(model, prompt, run, **keywords))
