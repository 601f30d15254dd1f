"""The chaos soak: migrations on the mini-cloud while things break.

``python -m tests.soak.run --seed S --migrations N --faults F`` (and, in a
short form, ``tox -e soak``): see doc/source/reliability.rst. The pure
parts (``schedule``, ``report``) need no cloud and are unit-tested in
tests/unit/soak.
"""
