"""One screen per view (k9s style: one key each) plus the modals they open."""
