"""LSRP, the LAN Storage Replication Protocol (the thesis, chapter 3).

* :mod:`~lsrp.protocol.frames` - the frame format and its incremental,
  validating decoder.
* :mod:`~lsrp.protocol.messages` - the message set (the thesis' D1-D11,
  C1-C6, E1-E5) and the fields each carries.
* :mod:`~lsrp.protocol.sessions` - per-disk sessions with increasing ids, so
  that frames of a dead source are never applied.

Specification: ``doc/source/protocol.rst``.
"""
