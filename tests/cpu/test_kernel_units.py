"""A build compiled as several units at once (build.Spec.units), and a first run's kernel libraries compiled
together (build.build_ahead, kernels.ahead). Tiny C sources stand in for the kernels."""
from __future__ import annotations

from pathlib import Path

import pytest

from specx.cpu import build

pytestmark = pytest.mark.skipif(build.c_compiler() is None, reason="no C compiler")

OPTIONS = ("-O1", "-shared", "-fPIC")
TWO_UNITS = """#if SPX_UNIT == 0
int spx_two(void);
int spx_sum(void) { return 40 + spx_two(); }
#else
__attribute__((visibility("hidden"))) int spx_two(void) { return 2; }
#endif
"""
ONE_IN_UNIT_ZERO = "#if !defined(SPX_UNIT) || SPX_UNIT == 0\nint spx_one(void) { return 1; }\n#endif\n"
BROKEN = """#if SPX_UNIT == 1
#error unit one is broken
#endif
int spx_one(void) { return 1; }
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "kernels"
    monkeypatch.setenv("SPECX_KERNEL_CACHE", str(folder))
    return folder


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def leftovers(cache: Path) -> list[str]:
    """Files in the cache other than libraries, their build records and the lock files."""
    return sorted(p.name for p in cache.iterdir() if not p.name.endswith((".so", ".sha256", ".lock")))


def test_units_are_compiled_apart_and_linked_into_one_library(cache, tmp_path):
    path = build.build("sum", write(tmp_path, "sum.c", TWO_UNITS), build.c_compiler(), OPTIONS, units=2)
    assert build.load(path).spx_sum() == 42
    assert leftovers(cache) == [] and [p.name for p in cache.glob("*.so")] == [path.name]


def test_a_failing_unit_fails_the_build_with_its_message_and_leaves_nothing(cache, tmp_path):
    with pytest.raises(OSError, match="unit one is broken"):
        build.build("broken", write(tmp_path, "broken.c", BROKEN), build.c_compiler(), OPTIONS, units=2)
    assert leftovers(cache) == [] and list(cache.glob("*.so")) == []


def test_the_unit_count_names_another_build(cache, tmp_path):
    source = write(tmp_path, "one.c", ONE_IN_UNIT_ZERO)
    alone = build.build("one", source, build.c_compiler(), OPTIONS)
    assert build.build("one", source, build.c_compiler(), OPTIONS, units=2) != alone


def test_what_build_ahead_compiled_is_then_found_without_compiling(cache, tmp_path, monkeypatch):
    cc = build.c_compiler()
    specs = [build.Spec("sum", write(tmp_path, "sum.c", TWO_UNITS), cc, OPTIONS, 2),
             build.Spec("one", write(tmp_path, "one.c", "int spx_one(void) { return 1; }\n"), cc, OPTIONS)]
    build.build_ahead([*specs, build.Spec("broken", write(tmp_path, "broken.c", BROKEN), cc, OPTIONS, 2)])
    assert leftovers(cache) == []   # the broken one raised nothing here, and left nothing

    def compile_again(*_):
        raise AssertionError("compiled again")

    monkeypatch.setattr(build, "_Compile", compile_again)
    assert build.load(build.build_spec(specs[0])).spx_sum() == 42
    assert build.load(build.build_spec(specs[1])).spx_one() == 1
    build.build_ahead(specs)   # nothing missing: nothing compiled


def test_kernels_ahead_asks_once_for_the_builds_the_libraries_load(monkeypatch):
    """What kernels.ahead compiles on a first run is what each library then loads here (not another build)."""
    from specx.cpu import attention, kernels, layers, quant

    loaded = [quant._library(), attention._library(), layers._library()]
    if any(lib is None for lib in loaded):
        pytest.skip("a kernel library is not available here")
    asked: list = []
    monkeypatch.setattr(kernels, "_state", {})
    monkeypatch.setattr(build, "build_ahead", asked.append)
    kernels.ahead()
    kernels.ahead()
    assert len(asked) == 1
    paths = {build._path(spec) for spec in asked[0]}
    assert paths == {loaded[0].path, *(Path(lib._name) for lib in loaded[1:])}


def test_each_kernel_instance_of_quant_c_is_in_exactly_one_unit():
    """quant.c's units (UNIT_1..UNIT_4, in quant_dispatch.h) hold each type's q8, f32 and DECODED kernels once: one
    left out would leave its symbol undefined when the units are linked (the build would not load), one twice would
    not link."""
    import re

    from specx.cpu import quant_build

    text = quant_build.SOURCE.with_name("quant_dispatch.h").read_text()

    def macro(head: str) -> str:   # a #define's body, its continuation lines included
        return re.search(rf"#define {re.escape(head)}(.*?)\n(?!\s)", text, re.DOTALL).group(1)

    quants, floats, q8_only = (re.findall(r"M\((T_\w+)\)", macro(f"{name}(M)"))
                               for name in ("QUANT_TYPES", "FLOAT_TYPES", "Q8_TYPES"))
    q8 = quants + q8_only   # Q8_TYPES: QUANT_TYPES and the q8-only pseudo types (T_Q4_K_G, T_Q6_K_G)
    wanted = sorted([("Q8", t) for t in q8] + [("DEC", t) for t in q8] + [("F32", t) for t in quants + floats])
    placed = sorted(pair for u in range(1, quant_build.UNITS)
                    for pair in re.findall(r"\b(Q8|F32|DEC)\((T_\w+)\)", macro(f"UNIT_{u}(Q8, F32, DEC)")))
    assert placed == wanted


def test_an_interrupted_compile_stops_its_compilers_and_leaves_nothing(cache, tmp_path):
    """Ctrl-C while a first run compiles: every compiler process of the build is stopped and no temporary file
    stays in the cache (a compiler that would take a minute stands in)."""
    slow = tmp_path / "slow-cc"
    slow.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo slow-cc 1; exit 0; }\nexec sleep 60\n')
    slow.chmod(0o755)
    spec = build.Spec("slow", write(tmp_path, "sum.c", TWO_UNITS), str(slow), OPTIONS, 3)
    job = build._Compile(spec, build._path(spec))
    assert len(job.running) == 3 and len(leftovers(cache)) == 3 and all(p.poll() is None for p in job.running)
    job.clean()   # what finish() does when KeyboardInterrupt reaches it
    assert all(p.returncode is not None for p in job.running)
    assert leftovers(cache) == [] and list(cache.glob(".slow-*")) == []
