# The API reference of fedex-api (os-api-ref): tox -e api-ref builds it
# with warnings as errors.

extensions = [
    'os_api_ref',
    'openstackdocstheme',
]

project = 'fedex-api Reference'
copyright = 'The FedEx migration developers'
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'

html_theme = 'openstackdocs'
html_theme_options = {'sidebar_mode': 'toc'}
openstackdocs_repo_name = 'openstack/fedex'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
openstackdocs_bug_project = 'fedex'
openstackdocs_bug_tag = 'api-ref'
html_last_updated_fmt = '%Y-%m-%d'
