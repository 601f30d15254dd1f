"""Filters and keyset pagination: the one way every list is paged.

A page is the rows strictly after the marker (the id of the previous
page's last row) in the order of the sort key then ``id``. The marker's
sort key is read by a subquery of the same SELECT (no round trip of its
own), and the comparison is written out key by key,
``k1 > m1 OR (k1 = m1 AND id > m2)``, behind the bound ``k1 >= m1``:
the OR alone is no range to a query planner (SQLite scanned the index
from the first row to the marker, a cost that grew with the table); the
bound is one, which the indexes ``(created_at, id)`` and
``(updated_at, id)`` serve.

A nullable key sorts as two: whether it is set, then its value (NULLs
first ascending, last descending, on every database), so that a marker
without a value still has the rows after it.

Not oslo.db's ``paginate_query``: it needs the marker row read first (a
round trip per page) and, for a marker whose key is NULL, drops that
key's comparison, which pages wrongly by a nullable key (a name).
"""

import sqlalchemy as sa

from lsrp import exception

SORT_DIRS = ('asc', 'desc')


def where(query, table, kind, filters):
    """``query`` with ``filters`` (column: value, or a list of values).

    A value may be a bound parameter (``sa.bindparam``; ``expanding`` for a
    list).
    """
    for key, value in (filters or {}).items():
        if key not in table.columns:
            raise exception.InvalidInput(
                field='filter', reason='%s has no field %r' % (kind, key))
        column = table.columns[key]
        if isinstance(value, (list, tuple, set)):
            query = query.where(column.in_(list(value)))
        elif getattr(value, 'expanding', False):
            # A bound list (a SELECT built once for any values).
            query = query.where(column.in_(value))
        else:
            query = query.where(column == value)
    return query


def check_sort(table, kind, sort_key, sort_dir):
    if sort_key not in table.columns:
        raise exception.InvalidInput(
            field='sort_key', reason='%s has no field %r' % (kind, sort_key))
    if sort_dir not in SORT_DIRS:
        raise exception.InvalidInput(
            field='sort_dir', reason="%r is not 'asc' or 'desc'" % sort_dir)


def _sort_exprs(table, sort_key):
    """What ``table`` is ordered by for ``sort_key``: expressions."""
    exprs = []
    for key in [sort_key] + (['id'] if sort_key != 'id' else []):
        column = table.c[key]
        if column.nullable:
            exprs.append(sa.case((column.is_(None), 0), else_=1))
        exprs.append(column)
    return exprs


def _same(e, v):
    # Two NULLs are the same value here (the NULL-ness key has already
    # put them together); '=' elsewhere, as the indexes' range wants.
    if getattr(e, 'nullable', False):
        return e.is_not_distinct_from(v)
    return e == v


# The alias of each table its markers are read from, built once: building
# it copies every column (two thirds of the Python time of building a page's
# SELECT).
_MARKER_ALIASES = {}


def _marker_alias(table):
    if table.name not in _MARKER_ALIASES:
        _MARKER_ALIASES[table.name] = table.alias('marker')
    return _MARKER_ALIASES[table.name]


def paginate(query, table, sort_key='id', sort_dir='asc', marker=None,
             limit=None, marker_must_exist=True):
    """``query`` (a SELECT of ``table``) ordered and cut into a page.

    ``marker``: the id of the row the page starts after. A marker that
    does not exist gives an empty page (see :func:`check_marker`), unless
    not ``marker_must_exist``: then its id is compared as it is (events
    page by id, past any number).
    """
    exprs = _sort_exprs(table, sort_key)
    if marker is not None:
        # The marker's keys, read by subqueries: NULL when it does not
        # exist, and nothing is after NULL.
        mt = _marker_alias(table)
        values = [sa.select(e).where(mt.c.id == marker).scalar_subquery()
                  for e in _sort_exprs(mt, sort_key)]
        if not marker_must_exist:
            values[-1] = marker

        def after(e, v):
            # A NULL on either side is never after: the NULL-ness key
            # before it has decided.
            return e < v if sort_dir == 'desc' else e > v
        after_marker = sa.or_(*[
            sa.and_(*[_same(exprs[j], values[j]) for j in range(i)],
                    after(e, values[i]))
            for i, e in enumerate(exprs)])
        if len(exprs) > 1:
            # Implied by the OR; there for the planner (a range).
            first = exprs[0] <= values[0] if sort_dir == 'desc' else \
                exprs[0] >= values[0]
            after_marker = sa.and_(first, after_marker)
        query = query.where(after_marker)
    order = sa.desc if sort_dir == 'desc' else sa.asc
    query = query.order_by(*[order(e) for e in exprs])
    if limit:
        query = query.limit(int(limit))
    return query


def check_marker(connection, table, kind, marker, page):
    """Refuse a ``marker`` that names no row, when its page came back empty.

    (A page with rows proves the marker exists: no query then.)
    """
    if marker is None or page:
        return
    if connection.execute(sa.select(table.c.id).where(
            table.c.id == marker)).first() is None:
        raise exception.InvalidInput(
            field='marker', reason='no %s %s' % (kind, marker))
