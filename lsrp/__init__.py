"""LSRP: the LAN Storage Replication Protocol and its terminal-node service.

Sub-packages:

* :mod:`lsrp.rbd` - the only code that talks to librados/librbd.
* :mod:`lsrp.sandbox` - the local two-site Ceph environment used by tests and
  demos (``fedex-sandbox``).
"""
