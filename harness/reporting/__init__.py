"""What a run reports. The report's sections (``reporter``) from what it reads of a run (``run_view``) and the
table and queue readers (``report``); the invariants it checks (``invariants``, ``saga_checks``), the lost sales
(``lost_sales``), the pager and the notifications per incident (``pager``, ``notifications``), the unused grants'
reasons (``iam_reasons``) and the bill (``costs``, ``costs_all_in``). It imports the workload and the faults."""
