"""The service's use cases that change state: what the API's routes (`service/routers`) and the dashboard's
forms (`service/ui`) both do. Each action takes the database transaction it works in (or, when it must read
storage before it, the settings alone) and a typed command, never an HTTP request; it refuses bad input before it
changes anything, with the service's errors (a tms.db error, a one-line TMSError, or the field's
RequestValidationError the API answers 422 with). Routes and pages are adapters: they parse the request, open
the transaction, call the action and turn its result or error into their answer."""
