"""Order domain: the order model, its status machine, inventory, payments and shipping."""
