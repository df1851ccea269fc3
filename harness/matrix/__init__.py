"""The fault matrix (``python -m harness local faults``, ``make faults``): every fault at every Task state of the
saga in one local deployment, judged from the records (``fault_matrix``); its concurrency and time cells
(``races``), the concurrent actors that run while an execution is live (``actors``) and the steps between the
matrix's phases (``phases``). It imports the faults (the cells and their judge), the reports and the local stack."""
