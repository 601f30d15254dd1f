"""barbican-api's WSGI application, for the mini-cloud's uWSGI.

Barbican's own ``barbican.wsgi.api`` loads its paste pipeline from
``/etc/barbican/barbican-api-paste.ini`` only; this loads the sandbox's copy
(``FEDEX_BARBICAN_PASTE``), whose ``/v1`` is the Keystone-authenticated
pipeline. Runs inside the OpenStack virtualenv.
"""

import os

from paste import deploy

application = deploy.loadapp('config:%s' % os.environ['FEDEX_BARBICAN_PASTE'])
