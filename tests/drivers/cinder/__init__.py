# Cinder's modules use its versioned objects at import time; its own test
# package registers them first (cinder/tests/unit/__init__.py).
from cinder import objects

objects.register_all()
