"""The sandbox: the whole product on one machine, for demos and tests.

``fedex-sandbox up`` starts two real single-node Ceph clusters, ``site-a``
and ``site-b`` (:mod:`fedex_sandbox.site`), the shared services
(:mod:`fedex_sandbox.services`), the shipment manager's processes
(:mod:`fedex_sandbox.manager`) and with ``--openstack`` a two-site
OpenStack (:mod:`fedex_sandbox.services.cloud`, Horizon in
:mod:`fedex_sandbox.horizon`); ``fedex-sandbox demo`` runs the demos.
It is the top floor: it imports the engine, the service and the
integrations, and nothing of the product imports it.
"""
