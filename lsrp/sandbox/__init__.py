"""The local two-site sandbox: two real single-node Ceph clusters.

``fedex-sandbox up`` starts ``site-a`` and ``site-b``; every functional test and
demo of this project runs against them. See :mod:`lsrp.sandbox.site`.
"""
