"""The shipment manager: see doc/source/manager.rst."""

from oslo_service import backend as _service_backend

# No eventlet anywhere in the manager: threads (oslo.service's threading
# backend, cotyledon). Decided before oslo.messaging picks its default.
_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)
