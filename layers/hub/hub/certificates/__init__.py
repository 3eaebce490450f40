"""Client certificates (mTLS): upload and checks, envelope encryption at rest, the expiry badge
and the daily expiry alert (issue 5; seed 000, scenario F and "Plataforma SEFAZ")."""
