"""Services of the sandbox besides Ceph: shared services and the mini-cloud."""
