"""LSRP: the LAN Storage Replication Protocol and its terminal-node service.

Sub-packages:

* :mod:`lsrp.rbd` - the only code that talks to librados/librbd.
* :mod:`lsrp.sandbox` - the local two-site Ceph environment used by tests and
  demos (``fedex-sandbox``).
"""

import os

# numpy is used for buffers and XOR, never for linear algebra; its OpenBLAS
# would start a thread per core that spins (2.7 % of an import's CPU in
# perf). Set before anything of ours imports numpy.
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
