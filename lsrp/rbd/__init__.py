"""RBD access: the only package of this project that imports rados/rbd.

* :class:`Cluster` - a connection to one site (conf, keyring, client name).
* :class:`Pool` - images and groups of a pool.
* :class:`Image` - info, snapshots, changed extents, sparse-aware reads,
  writes, exact zeroing, whole-image digests.
* :class:`Group` - crash-consistent RBD group snapshots.

Every librados/librbd error surfaces as a :mod:`lsrp.exception` error naming
the site, pool, image and snapshot. The bindings are imported when present
(:mod:`lsrp.rbd.bindings`): without them this package imports, and only
connecting to a cluster fails.
"""

from lsrp.rbd.cluster import Cluster  # noqa: F401
from lsrp.rbd.cluster import DEFAULT_FEATURES  # noqa: F401
from lsrp.rbd.cluster import feature_bits  # noqa: F401
from lsrp.rbd.cluster import Group  # noqa: F401
from lsrp.rbd.cluster import Pool  # noqa: F401
from lsrp.rbd.extents import Extent  # noqa: F401
from lsrp.rbd.image import GroupSnapshotRef  # noqa: F401
from lsrp.rbd.image import Image  # noqa: F401
from lsrp.rbd.image import ImageInfo  # noqa: F401
from lsrp.rbd.image import Snapshot  # noqa: F401
