"""Draft-length policies, the cost model `auto` decides with, measured costs and tuned settings saved across runs."""
