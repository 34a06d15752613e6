"""Built-in example specs, shipped as package data (`symblock examples` lists them)."""
