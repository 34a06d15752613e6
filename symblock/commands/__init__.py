"""The command-line glue: one module per `symblock` command (add_arguments, run), above every package."""
