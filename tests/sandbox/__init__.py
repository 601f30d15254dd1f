"""The sandbox's own life cycle, by hand (``tox -e sandbox``)."""
