from symblock.cli import main

raise SystemExit(main())
