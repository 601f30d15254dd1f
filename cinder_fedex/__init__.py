"""Cinder side of Migration over FedEx.

Will hold an RBD volume driver (a subclass of Cinder's ``RBDDriver``) so that
attached volumes move in the same shipment as the VM's disks. Nothing here
yet: the storage path (``lsrp``) comes first.
"""
