"""What other parts of the project run on the sandbox, found by entry point.

The sandbox knows its Ceph sites and the shared services. What runs on top
of them registers itself, so that the arrows point one way (those parts
import the sandbox, never the reverse):

* group ``fedex.sandbox.layers``: a class made with the sandbox, with
  ``configured()``, ``up()`` (``{name: action}``), ``down()``
  (``[(name, pid)]``) and ``status()`` (service status dicts); ``fedex-sandbox
  up`` starts each after the sites, ``down`` stops them first. The shipment
  manager (a conductor and one terminal agent per site) is one.
* group ``fedex.sandbox.demos``: a class made with ``(sandbox, disk_mib=,
  write_rate=, threshold_mib=)``, with ``run()`` (the summary) and
  ``cleanup()``: ``fedex-sandbox demo`` runs ``manager`` unless
  ``--direct`` asks for the engine's steps one by one.
"""

from stevedore import driver
from stevedore import extension

from lsrp import exception

LAYERS = 'fedex.sandbox.layers'
DEMOS = 'fedex.sandbox.demos'


def _refuse(manager, entry_point, error):
    # stevedore logs and skips a plugin that fails to load: a layer that is
    # silently missing would look like one that is not installed.
    raise exception.SandboxPluginError(
        name='%s (%s)' % (entry_point.name, entry_point.value),
        group=manager.namespace, reason='failed to load: %s' % error)


def layers(sb):
    """``[(name, layer)]`` of every registered layer, made for ``sb``."""
    mgr = extension.ExtensionManager(
        LAYERS, invoke_on_load=True, invoke_args=(sb,),
        on_load_failure_callback=_refuse)
    return sorted(((ext.name, ext.obj) for ext in mgr),
                  key=lambda pair: pair[0])


def demo_names():
    return sorted(extension.ExtensionManager(DEMOS).names())


def demo_class(name):
    """The demo registered as ``name``."""
    try:
        return driver.DriverManager(DEMOS, name).driver
    except Exception as e:
        raise exception.SandboxPluginError(
            name=name, group=DEMOS, reason='cannot be loaded (%s; installed: '
            '%s)' % (e, ', '.join(demo_names()) or 'none'))
