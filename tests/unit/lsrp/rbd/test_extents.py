"""Extent arithmetic, checked against a byte-map model with hypothesis."""

from hypothesis import given
from hypothesis import strategies as st
import testtools

from lsrp.rbd import extents
from lsrp.rbd.extents import Extent


@st.composite
def sorted_extents(draw, size=4096):
    """Non-overlapping, sorted extents inside [0, size)."""
    cuts = sorted(draw(st.sets(st.integers(0, size), max_size=20)))
    out = []
    for start, end in zip(cuts[::2], cuts[1::2]):
        out.append(Extent(start, end - start, draw(st.booleans())))
    return out


def byte_map(exts, size=4096):
    """Per-byte state: None (not covered), True (data), False (zero)."""
    m = [None] * size
    for e in exts:
        for i in range(e.offset, e.offset + e.length):
            m[i] = e.exists
    return m


class TestExtents(testtools.TestCase):

    @given(sorted_extents())
    def test_merge_keeps_bytes_and_joins_neighbours(self, exts):
        merged = list(extents.merge(exts))
        self.assertEqual(byte_map(exts), byte_map(merged))
        for a, b in zip(merged, merged[1:]):
            self.assertFalse(a.offset + a.length == b.offset
                             and a.exists == b.exists)
        self.assertTrue(all(e.length > 0 for e in merged))

    @given(sorted_extents(), st.integers(1, 700))
    def test_split_bounds_pieces(self, exts, limit):
        pieces = list(extents.split(exts, limit))
        self.assertEqual(byte_map(exts), byte_map(pieces))
        self.assertTrue(all(0 < p.length <= limit for p in pieces))

    @given(sorted_extents())
    def test_with_holes_covers_range(self, exts):
        data = [e for e in exts if e.exists]
        full = list(extents.with_holes(data, 0, 4096))
        m = byte_map(full)
        self.assertNotIn(None, m)
        self.assertEqual([x is True for x in byte_map(data)],
                         [x is True for x in m])
        self.assertEqual(0, full[0].offset)
        self.assertEqual(4096, full[-1].offset + full[-1].length)

    def test_merge_drops_empty(self):
        self.assertEqual([Extent(0, 10, True)],
                         list(extents.merge([Extent(0, 4, True),
                                             Extent(4, 0, False),
                                             Extent(4, 6, True)])))
