# Release notes of Migration over FedEx, built by reno: tox -e releasenotes.

extensions = [
    'openstackdocstheme',
    'reno.sphinxext',
]

project = 'Migration over FedEx Release Notes'
copyright = 'The FedEx migration developers'
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'

html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/fedex'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
openstackdocs_bug_project = 'fedex'
openstackdocs_bug_tag = ''
