# Sphinx configuration of the Migration over FedEx docs: tox -e docs builds
# them with warnings as errors.

import os
import sys

sys.path.insert(0, os.path.abspath('_exts'))

extensions = [
    'sphinx.ext.autodoc',
    'sphinx.ext.viewcode',         # [source] links of the code pages
    'myst_parser',                 # design.md
    'oslo_config.sphinxext',       # configuration.rst, from list_opts
    'openstackdocstheme',
    'cli_help',                    # cli.rst, from the real parsers
]

project = 'Migration over FedEx'
copyright = 'The FedEx migration developers'
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'
autodoc_member_order = 'bysource'

html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/fedex'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
openstackdocs_bug_project = 'fedex'
openstackdocs_bug_tag = ''
html_last_updated_fmt = '%Y-%m-%d'
nitpicky = True   # a reference to code that moved fails the build
