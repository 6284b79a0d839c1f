"""The fleet: tables found on storage and onboarded by TMS (`discovery` finds them, `onboarding` registers
what TMS can serve, lists what it refuses with the reason, and disables registered tables that are gone),
and what a registration stores of a table (`registration`)."""
