"""Budget probing: pure parsers over sample file contents, and --mem-budget parsing."""
from __future__ import annotations

import platform
from pathlib import Path

import pytest

from specx.errors import UsageError
from specx.memory import probe

MEMINFO = "MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n"


def test_meminfo_is_read_in_bytes():
    info = probe.parse_meminfo(MEMINFO)
    assert info["MemTotal"] == 24000000 * 1024 and info["MemAvailable"] == 20000000 * 1024


@pytest.mark.parametrize("text, expected", [("max\n", None), ("9223372036854771712\n", None),
                                            ("4294967296\n", 4 << 30), (None, None), ("", None)])
def test_cgroup_limit_files(text, expected):
    assert probe.parse_limit(text) == expected


def test_cgroup_headroom_counts_reclaimable_page_cache():
    stat = "anon 1000\ninactive_file 1073741824\nactive_file 5\n"
    room = probe.cgroup_headroom("4294967296", str(3 << 30), stat)
    assert room == (4 << 30) - ((3 << 30) - (1 << 30))


def test_cgroup_v1_names_its_page_cache_differently():
    assert probe.cgroup_headroom(str(8 << 30), str(2 << 30), "total_inactive_file 0\n") == 6 << 30


def test_cgroup_dirs_v1_and_v2():
    v1 = probe.cgroup_dirs("4:memory:/box/a\n1:cpu:/\n", "/cg")
    assert [str(p) for _, p in v1] == ["/cg/memory/box/a", "/cg/memory"]
    assert [v for v, _ in probe.cgroup_dirs("0::/user.slice\n", "/cg")] == ["v2", "v2"]


def test_cpu_available_takes_the_cgroup_limit_when_lower(tmp_path):
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "memory.max").write_text(str(2 << 30))
    (tmp_path / "box" / "memory.current").write_text(str(1 << 30))
    room, why = probe.cpu_available(MEMINFO, "0::/box\n", str(tmp_path))
    assert room == 1 << 30 and "cgroup v2" in why


def test_cpu_available_without_a_limit_is_memavailable(tmp_path):
    (tmp_path / "memory.max").write_text("max\n")
    room, why = probe.cpu_available(MEMINFO, "0::/\n", str(tmp_path))
    assert room == 20000000 * 1024 and why == "MemAvailable"


@pytest.mark.parametrize("text, expected", [("6GiB", 6 << 30), ("16G", 16 << 30), ("500MB", 500 * 10**6),
                                            ("1.5 GiB", 3 << 29), ("0", 0), ("2048", 2048)])
def test_sizes(text, expected):
    assert probe.parse_size(text) == expected


def test_mem_budget_parses_each_device():
    assert probe.parse_mem_budget("gpu=6GiB, cpu=16GiB") == {"gpu": 6 << 30, "cpu": 16 << 30}


@pytest.mark.parametrize("bad, words", [("gpx=6GiB", "did you mean gpu"), ("gpu6GiB", "no '='"),
                                        ("gpu=six", "cannot read"), ("", "empty")])
def test_bad_mem_budgets_are_usage_errors(bad, words):
    with pytest.raises(UsageError, match=words):
        probe.parse_mem_budget(bad)


def test_detect_uses_overrides_and_says_so():
    b = probe.detect({"gpu": 6 << 30, "cpu": 16 << 30, "disk": 1 << 40})
    assert (b.gpu, b.cpu, b.disk, b.source) == (6 << 30, 16 << 30, 1 << 40, "from --mem-budget")
    assert probe.detect({"gpu": 0, "cpu": 1, "disk": 1}).gpu is None   # gpu=0: plan without a GPU


def test_disk_free_walks_up_to_an_existing_folder(tmp_path):
    assert probe.disk_free(tmp_path / "not" / "yet") > 0


def test_peak_memory_is_this_process_s_own_not_a_parent_s():
    """VmHWM is read from the status text; a child of a big process reports its own peak (ru_maxrss
    survives exec on Linux, so a test runner's peak once showed up as a small run's)."""
    assert probe.parse_hwm("Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n") == 2048 * 1024
    assert probe.parse_hwm("Name:\tpython\n") is None
    import subprocess, sys
    big = "b = bytearray(600 * 2**20); b[::4096] = b'x' * len(b[::4096]); import subprocess, sys; " \
          "print(subprocess.run([sys.executable, '-c', 'from specx.memory.probe import peak_rss_bytes; " \
          "print(peak_rss_bytes())'], capture_output=True, text=True, check=True).stdout)"
    child = int(subprocess.run([sys.executable, "-c", big], capture_output=True, text=True, check=True).stdout)
    assert 0 < child < 400 * 2**20


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or not Path("/proc/self/status").exists(),
                    reason="glibc's malloc_trim and /proc")
def test_heap_pages_freed_in_the_middle_of_the_heap_go_back_to_the_system():
    """Blocks freed between blocks still in use stay resident under glibc until release_freed_heap."""
    import re

    from specx.memory.probe import release_freed_heap

    def rss() -> int:
        return int(re.search(r"^VmRSS:\s+(\d+)", Path("/proc/self/status").read_text(), re.M).group(1)) * 1024

    blocks = [bytes(4000) + i.to_bytes(4, "little") for i in range(40_000)]   # 160 MB through malloc
    kept = blocks[::16]
    del blocks
    before = rss()
    release_freed_heap()
    assert before - rss() > 80 * 2**20
    assert len(kept) == 2500
