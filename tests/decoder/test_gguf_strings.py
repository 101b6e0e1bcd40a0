"""specx.decoder.gguf_strings: a GGUF string array checked at open and decoded when read reads as the
list of its strings, and refuses what decoding each string on its own would refuse."""
from __future__ import annotations

import random
import struct

import pytest

from specx.decoder.gguf_strings import BadStrings, read_strings


def packed(strings: list[bytes]) -> bytes:
    return b"".join(struct.pack("<Q", len(s)) + s for s in strings)


def test_strings_read_as_the_list_of_their_strings():
    """len, indexing (negative too), slices, iteration, tolist and == agree with a list of the strings."""
    rng = random.Random(35)
    alphabet = ["a", "Ġ", "ç", "日", "🙂", " ", "\n", "\x00"]
    expect = [""] + ["".join(rng.choices(alphabet, k=rng.randrange(6))) for _ in range(200)]
    data = b"pad" + packed([s.encode() for s in expect]) + b"tail"
    strings, end = read_strings(data, 3, len(data), len(expect))
    assert end == len(data) - 4
    assert len(strings) == len(expect) and strings == expect and expect == strings.tolist() == list(strings)
    assert [strings[i] for i in (0, 7, -1, -len(expect))] == [expect[i] for i in (0, 7, -1, -len(expect))]
    assert strings[5:40:3] == expect[5:40:3] and strings[::-1] == expect[::-1]
    with pytest.raises(IndexError):
        strings[len(expect)]


@pytest.mark.parametrize("pieces", [
    [b"ok", b"a\xc3", b"x" * 0xA7],     # ends in a lead byte the next length (A7 00 ...) would complete
    [b"ok", b"\xff"],
    [b"ok", b"ab\xe4\xbd"],            # cut inside its last character
])
def test_a_string_that_is_not_utf8_on_its_own_is_refused(pieces):
    data = packed(pieces)
    with pytest.raises(BadStrings, match="offset 10 is not UTF-8"):   # the second string's length field
        read_strings(data, 0, len(data), len(pieces))


def test_a_length_past_the_end_is_refused():
    data = packed([b"ab", b"cd"])
    with pytest.raises(BadStrings, match="past the end"):
        read_strings(data, 0, len(data) - 1, 2)
    with pytest.raises(BadStrings, match="past the end"):
        read_strings(data, 0, len(data), 3)
