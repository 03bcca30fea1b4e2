from redthread.cli import main

raise SystemExit(main())
