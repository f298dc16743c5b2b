-- The entitlements of one app user (pgbench -M prepared): the user's subscriptions with their current expiry and
-- whether it is still active. :users is set by run.sh (as many users as the ledger's read mode fills).
\set u random(1, :users)
SELECT original_transaction_id, product_id, expires_date, expires_date > now() AS active
FROM subscriptions WHERE app_user_id = 'u' || (:u)::int;
