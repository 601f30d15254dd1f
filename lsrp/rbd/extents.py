"""Extents: ranges of an image as ``diff_iterate`` reports them."""

import collections

Extent = collections.namedtuple('Extent', 'offset length exists')
Extent.__doc__ = """A byte range of an image.

``exists`` is False for a range that was discarded (reads as zeros) since the
snapshot the extents were listed from; True for data.
"""


def merge(extents):
    """Join adjacent extents with the same ``exists``; input must be sorted."""
    current = None
    for ext in extents:
        if ext.length == 0:
            continue
        if (current is not None and current.exists == ext.exists
                and current.offset + current.length == ext.offset):
            current = Extent(current.offset, current.length + ext.length,
                             current.exists)
            continue
        if current is not None:
            yield current
        current = ext
    if current is not None:
        yield current


def split(extents, max_length):
    """Cut extents into pieces of at most ``max_length`` bytes."""
    for ext in extents:
        offset, end = ext.offset, ext.offset + ext.length
        while offset < end:
            length = min(max_length, end - offset)
            yield Extent(offset, length, ext.exists)
            offset += length


def with_holes(extents, offset, length):
    """Cover [offset, offset+length) completely.

    Yields the given (sorted, non-overlapping) data extents and, for the gaps
    between them, extents with ``exists=False``: a whole-image view in which
    every hole reads as zeros.
    """
    pos, end = offset, offset + length
    for ext in extents:
        if ext.offset > pos:
            yield Extent(pos, ext.offset - pos, False)
        yield ext
        pos = ext.offset + ext.length
    if pos < end:
        yield Extent(pos, end - pos, False)
