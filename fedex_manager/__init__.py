"""The shipment manager: fedex-api, fedex-conductor, lsrp-agent, fedex-manage.

It carries migrations through their phases (see doc/source/manager.rst);
it imports the engine (:mod:`lsrp`) and nothing above it.
"""

import sys
import warnings

from oslo_service import backend as _service_backend

# No eventlet anywhere in the manager: threads (oslo.service's threading
# backend, cotyledon). Decided before oslo.messaging picks its default.
_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)

# NOTE: eventlet is installed as a dependency of oslo.service, and futurist
# (under oslo.service's threading backend, oslo.messaging and taskflow)
# imports it whenever it is installed; eventlet then warns at import time
# that it is deprecated. Nothing here uses it, so the warning is not ours to
# act on: it is hidden unless warnings are asked for (python -W, or
# PYTHONWARNINGS), before any of those libraries is imported.
if not sys.warnoptions:
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
