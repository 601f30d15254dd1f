"""The storage engine of Migration over FedEx and its terminal service.

The engine moves RBD images between two Ceph clusters: onto shipping
devices and back (:mod:`lsrp.device`), over LSRP, the LAN Storage
Replication Protocol (:mod:`lsrp.protocol`), in WAN catch-up rounds
(:mod:`lsrp.catchup`); :mod:`lsrp.server` is the terminal service
(``lsrp-server``) and :mod:`lsrp.rbd` the only code that talks to
librados/librbd. It imports nothing of the shipment manager
(:mod:`fedex_manager`) nor of the sandbox (:mod:`fedex_sandbox`).
"""

import os

# numpy is used for buffers and XOR, never for linear algebra; its OpenBLAS
# would start a thread per core that spins (2.7 % of an import's CPU in
# perf). Set before anything of ours imports numpy.
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
