"""Times as the manager stores them (naive UTC) and shows them (ISO 8601)."""

import datetime

from fedex_manager.db import models


def now():
    """The current time as stored: naive UTC."""
    return models._now()


def iso(value):
    """``value`` as shown: ISO 8601 with a Z; anything else unchanged."""
    if isinstance(value, datetime.datetime):
        return value.isoformat() + 'Z'
    return value


def utcfromiso(text):
    """A stored time from ISO 8601 text (with or without a Z); None stays.

    A time with a zone is converted to UTC (ValueError when that is out of
    the range of times).
    """
    if text is None:
        return None
    value = text if isinstance(text, datetime.datetime) else \
        datetime.datetime.fromisoformat(text.rstrip('Z'))
    if value.tzinfo is not None:
        try:
            value = value.astimezone(datetime.timezone.utc)
        except OverflowError:
            raise ValueError('%s is out of the range of times' % text)
    return value.replace(tzinfo=None)
