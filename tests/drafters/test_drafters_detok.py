"""Pure pieces around the loop: n-gram lookup, incremental detokenisation, stop strings."""
from __future__ import annotations

from conftest import word_tokenizer
from specx.engine.detok import TextStream
from specx.engine.draft import Ask
from specx.drafters.ngram import NgramDrafter


def propose(seq, k=4):
    return NgramDrafter().propose(seq, Ask(k)).tokens


def test_ngram_continues_the_latest_earlier_occurrence():
    """The draft is what followed the latest earlier occurrence of the longest matching suffix."""
    assert propose([1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3]) == [7, 8, 5, 1]
    assert propose([5, 6, 1, 2, 6, 1], k=2) == [2, 6]       # n=2 ("6 1") wins over n=1
    assert propose([1, 2, 3, 4]) == []                      # no earlier occurrence: nothing drafted


def test_ngram_never_matches_the_suffix_itself_and_stops_at_the_end():
    """A suffix is not its own occurrence; a continuation running into the end is cut there."""
    assert propose([4, 4]) == [4]
    assert propose([7, 8, 7, 8], k=10) == [7, 8]


def test_ngram_index_is_incremental():
    """Growing the sequence between calls gives the same drafts as a fresh drafter."""
    d, seq = NgramDrafter(), [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    for extra in ([8, 9, 7, 9], [3, 2, 3, 8, 4, 6], [2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5]):
        seq = seq + extra
        assert d.propose(seq, Ask(5)).tokens == propose(seq, 5)


def test_ngram_resumes_the_copy_one_token_past_a_replaced_one():
    """Copying with an edit (a renamed variable): after the target's replacement the copy goes on."""
    d = NgramDrafter()
    seq = [10, 11, 12, 13, 14, 15, 16, 17, 99, 10, 11, 12]
    assert d.propose(seq, Ask(4)).tokens == [13, 14, 15, 16]
    d.commit(4, 1)                      # 13 accepted; the target wrote 50 where the source has 14
    seq += [13, 50]                     # "12 13 50" occurs nowhere: only the followed copy knows where to go
    assert d.propose(seq, Ask(3)).tokens == [15, 16, 17]
    d.commit(3, 3)
    seq += [15, 16, 17, 99]             # the copy continues without any lookup
    assert d.propose(seq, Ask(2)).tokens == [10, 11]


def test_a_resumed_copy_the_target_rejects_outright_is_dropped():
    """Free prose is not an edited copy: a guess past a replaced token that fails is not repeated."""
    d = NgramDrafter()
    seq = [10, 11, 12, 13, 14, 15, 16, 17, 99, 10, 11, 12]
    d.propose(seq, Ask(4))
    d.commit(4, 0)
    seq += [60]
    assert d.propose(seq, Ask(3)).tokens == [14, 15, 16]   # resume past the replaced 13
    d.commit(3, 0)
    seq += [61]
    assert d.propose(seq, Ask(3)).tokens == []             # no match and no copy to follow
    assert d.edits == {}                                   # and 60 for 13 was no edit to repeat


def test_a_copy_repeats_an_edit_the_target_made():
    """Renaming a variable replaces every use of it: once the target wrote 50 for 13, copies write
    50 wherever the source has 13 (instead of ending at its next use)."""
    d = NgramDrafter()
    seq = [10, 11, 12, 13, 14, 15, 13, 16, 17, 99, 10, 11, 12]
    assert d.propose(seq, Ask(4)).tokens == [13, 14, 15, 13]
    d.commit(4, 0)
    seq += [50]                                            # the target's own token replaces 13
    assert d.propose(seq, Ask(4)).tokens == [14, 15, 50, 16]
    d.commit(4, 4)
    seq += [14, 15, 50, 16, 17]
    assert d.propose(seq, Ask(3)).tokens == [99, 10, 11]   # the followed copy goes on past the edit


def test_a_copy_cut_before_an_edit_goes_on_after_the_target_makes_it():
    """The copy stops just before the edited token and the target writes the replacement itself: the
    copy goes on after it, on the evidence of the whole run behind it (edits included)."""
    d = NgramDrafter()
    seq = [10, 11, 12, 13, 14, 15, 13, 16, 17, 99, 10, 11, 12]
    d.propose(seq, Ask(4))
    d.commit(4, 0)
    seq += [50]
    assert d.propose(seq, Ask(2)).tokens == [14, 15]
    d.commit(2, 2)
    seq += [14, 15, 50]                                    # the target's own token: 50 where the source has 13
    draft = d.propose(seq, Ask(3))
    assert draft.tokens == [16, 17, 99] and draft.source == "match4"   # 12 50 14 15 50 ← 12 13 14 15 13


def test_an_edit_the_target_does_not_repeat_is_forgotten():
    d = NgramDrafter()
    seq = [10, 11, 12, 13, 14, 15, 13, 16, 17, 99, 10, 11, 12]
    d.propose(seq, Ask(4))
    d.commit(4, 0)
    seq += [50]
    assert d.propose(seq, Ask(4)).tokens == [14, 15, 50, 16]
    d.commit(4, 2)
    seq += [14, 15, 13]                                    # here the target kept 13
    assert d.propose(seq, Ask(4)).tokens == [16, 17, 99, 10] and d.edits == {}


def test_a_one_token_match_drafts_at_most_two():
    """One matching token is weak evidence: the draft is short."""
    assert propose([5, 1, 2, 3, 4, 9, 5], k=4) == [1, 2]
    assert propose([5, 1, 2, 3, 4, 9, 5, 1], k=4) == [2, 3, 4, 9]      # two tokens match: the full k


class ByteTok:
    """Decodes ids as raw bytes, so one character can span several tokens."""

    def decode(self, ids, **_):
        return bytes(ids).decode("utf-8", errors="replace")


def test_text_stream_holds_incomplete_utf8():
    """A multi-byte character split over tokens is released whole, never as U+FFFD."""
    s = TextStream(ByteTok())
    out = [s.push(b) for b in "né€".encode()]
    assert "".join(out) + s.flush() == "né€"
    assert all("\ufffd" not in o for o in out)


def test_text_stream_deltas_concatenate_to_the_full_decode():
    """The deltas add up to decode(all ids)."""
    tok = word_tokenizer()
    ids = [5, 17, 3, 88, 3, 40]
    s = TextStream(tok)
    assert "".join(s.push(i) for i in ids) + s.flush() == tok.decode(ids)


def test_stop_string_across_tokens_is_cut_and_held_text_is_not_leaked():
    """A stop string spread over tokens ends the text before it; a partial match is held, then released."""
    tok = word_tokenizer()
    s = TextStream(tok, ("w7 w8",))
    out = "".join(s.push(i) for i in (5, 7, 9, 7, 8, 2))
    assert s.stopped and out == "w5 w7 w9 "
    s = TextStream(tok, ("w7 w8",))
    assert "".join(s.push(i) for i in (5, 7, 9)) + s.flush() == tok.decode([5, 7, 9])


def test_a_copys_evidence_is_how_far_back_the_match_goes():
    """The cost model learns each kind of copy apart: the label is the match length, in buckets."""
    from specx.drafters.ngram import evidence_kind

    assert [evidence_kind(n) for n in (1, 2, 3, 4, 7, 8, 16)] == (
        ["match1", "match2", "match3", "match4", "match4", "match8", "match8"])
    assert evidence_kind("resume") == "resume"
    source = list(range(20, 32))
    long_copy = source + [99] + source[:10]          # the last 10 tokens repeat: a long running copy
    assert NgramDrafter().propose(long_copy, Ask(2)).source == "match8"
    assert NgramDrafter().propose([5, 6, 1, 2, 9, 4, 1, 2], Ask(2)).source == "match2"


def test_a_copy_resumes_past_a_replaced_token_only_after_a_real_run():
    """One or two matching tokens followed by a replacement is prose, not an edited copy: no resume."""
    d = NgramDrafter()
    seq = [40, 41, 42, 43, 44, 99, 7, 40]
    d.propose(seq, Ask(3))   # a one-token match: 41, 42 drafted
    d.commit(2, 1)
    seq += [41, 60]                       # 41 accepted, then the target's own 60 (the source has 42)
    assert d.propose(seq, Ask(3)).tokens == []


def test_a_copy_stops_at_a_token_that_ends_the_answer():
    """Nothing after an end-of-answer token is ever kept, so a copy goes no further than the first (it included)."""
    seq = [40, 41, 42, 2, 50, 51, 40, 41, 42]             # the source continues past the end token 2
    assert NgramDrafter().propose(seq, Ask(5)).tokens == [2, 50, 51, 40, 41]
    assert NgramDrafter().propose(seq, Ask(5, eos=frozenset({2}))).tokens == [2]
    seq = [5, 6, 7, 2, 9, 4, 5, 6, 8, 10, 11, 12, 13, 5, 6]   # (5, 6) went on as 8, 10, … and as 7, 2, 9, 4
    tree = NgramDrafter().propose(seq, Ask(4, tree=12, eos=frozenset({2})))
    assert tree.tokens == [8, 10, 11, 12, 7, 2] and tree.parents == (-1, 0, 1, 2, -1, 4)   # a tree's branch too
