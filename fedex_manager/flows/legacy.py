"""The names releases before 2027.1 saved in taskflow logbooks.

The shipment manager was ``lsrp.manager`` until the service got a package
of its own. A conductor resumes a flow from the import path of its
factory saved with the job (``lsrp.manager.flows.phases.prepare``), and
:class:`~fedex_manager.flows.tasks.common.Begin` tells a saved failure
apart by its exception's qualified name. Both old names keep working for
one release: :func:`install` makes ``lsrp.manager.X`` import as
``fedex_manager.X`` (the same module object, not a copy), and
:data:`SUPERSEDED` is the old name of
:class:`~fedex_manager.flows.tasks.Superseded`.
"""

import importlib
import importlib.abc
import importlib.util
import sys

OLD = 'lsrp.manager'
NEW = 'fedex_manager'
SUPERSEDED = OLD + '.flows.tasks.Superseded'


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``lsrp.manager[.X]`` as the module ``fedex_manager[.X]``."""

    def find_spec(self, name, path=None, target=None):
        if name == OLD or name.startswith(OLD + '.'):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        # NOTE: the module already imported under its new name, so that a
        # class resolved through the old path is the class itself.
        return importlib.import_module(NEW + spec.name[len(OLD):])

    def exec_module(self, module):
        pass


def install():
    """Serve the old import paths (idempotent)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        # NOTE: first, before the path finder: it would find the old name's
        # sub-packages in the new package's __path__ and load copies.
        sys.meta_path.insert(0, _Alias())
