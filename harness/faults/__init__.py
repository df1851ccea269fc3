"""The faults the harness injects. The fault matrix's cells (each fault at each Task state, ``cells``) and what
an order's end must be under each (``judge``); injecting a plan of them (``inject``) or a seeded random draw
(``random_faults``); the local run's chaos (duplicates, crashes, malformed and hostile input, throttling:
``chaos``); and the app's own patches of third-party code that inject them, registered with the emulator's
(``patches``). It imports only the workload."""
