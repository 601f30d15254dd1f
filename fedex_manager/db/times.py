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
    """A stored time from ISO 8601 text (with or without a Z); None stays."""
    if text is None:
        return None
    if isinstance(text, datetime.datetime):
        return text.replace(tzinfo=None)
    return datetime.datetime.fromisoformat(
        text.rstrip('Z')).replace(tzinfo=None)
