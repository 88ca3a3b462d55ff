"""The HTTP routes: one ``APIRouter`` per module, mounted in the order of
:data:`breadcrumb.query_api.app.ROUTES`; handlers reach the runtime through
``request.app.state.runtime``."""
