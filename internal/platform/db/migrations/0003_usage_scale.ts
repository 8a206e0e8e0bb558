import { sql, type Kysely } from "kysely";

/**
 * Usage at scale (docs/usage.md "How summaries stay fast"):
 *
 * - `usage_logs` becomes a table partitioned by month of `created_at` (UTC),
 *   with a default partition so that no insert ever fails for want of one;
 *   `internal/usage/partitions.ts` keeps the months ahead created and drops
 *   the ones past the retention.
 * - `usage_rollups` keeps per account, model, API key and status the sums of
 *   every hour and every day, maintained by a trigger on `usage_logs` in the
 *   transaction that writes (moves, deletes) the row: a summary reads whole
 *   days and hours from it and only the partial hours at its edges from
 *   `usage_logs`.
 *
 * Existing rows are copied into the new table, and the rollups built from
 * them, in this migration's transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table usage_logs rename to usage_logs_unpartitioned`.execute(db);
  await sql`alter index usage_logs_pkey rename to usage_logs_unpartitioned_pkey`.execute(db);
  await sql`alter index usage_account_time_idx rename to usage_logs_unpartitioned_account_time_idx`.execute(db);

  await sql`
    create table usage_logs (
      id text not null,
      account_id text not null references accounts(id) on delete cascade,
      api_key_id text,
      created_at timestamptz not null default now(),
      endpoint text not null,
      model text not null,
      status text not null check (status in ('success','error')),
      error_code text,
      prompt_tokens integer not null default 0,
      completion_tokens integer not null default 0,
      tokens_used integer not null default 0,
      pages_processed integer not null default 0,
      provider_cost_cents numeric not null default 0,
      platform_fee_cents numeric not null default 0,
      cost_cents numeric not null default 0,
      processing_time_ms integer not null default 0,
      primary key (id, created_at)
    ) partition by range (created_at)`.execute(db);
  // Newest first with a tie-breaker: the list's order, its keyset (starting_after) and the export's.
  await sql`create index usage_account_time_idx on usage_logs (account_id, created_at, id)`.execute(db);
  await sql`create table usage_logs_default partition of usage_logs default`.execute(db);

  // One partition for each month that has rows, and for this month and the next two.
  const { rows } = await sql<{ month: Date }>`select distinct date_trunc('month', created_at, 'UTC') as month from usage_logs_unpartitioned`.execute(db);
  const now = new Date();
  const months = new Set(rows.map((r) => r.month.getTime()));
  for (let m = 0; m < 3; m++) months.add(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + m, 1));
  for (const start of months) {
    const from = new Date(start);
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const name = `usage_logs_${from.toISOString().slice(0, 7).replace("-", "_")}`;
    await sql`create table ${sql.id(name)} partition of usage_logs for values from (${sql.lit(from.toISOString())}) to (${sql.lit(to.toISOString())})`.execute(db);
  }
  await sql`insert into usage_logs select * from usage_logs_unpartitioned`.execute(db);
  await sql`drop table usage_logs_unpartitioned`.execute(db);

  await sql`
    create table usage_rollups (
      account_id text not null references accounts(id) on delete cascade,
      grain text not null check (grain in ('hour','day')),
      period timestamptz not null,
      model text not null,
      api_key_id text not null,
      status text not null check (status in ('success','error')),
      requests bigint not null,
      tokens bigint not null,
      pages bigint not null,
      provider_cost_cents numeric not null,
      platform_fee_cents numeric not null,
      cost_cents numeric not null,
      primary key (account_id, grain, period, model, api_key_id, status)
    )`.execute(db);

  // The rollups follow every change to usage_logs, in its transaction. A row moved to another
  // partition by an UPDATE reaches this as a DELETE and an INSERT. api_key_id '' = no key.
  await sql`
    create function usage_rollup_apply(r usage_logs, sign integer) returns void language plpgsql as $$
    declare
      g text;
    begin
      foreach g in array array['hour','day'] loop
        if sign > 0 then
          insert into usage_rollups as u (account_id, grain, period, model, api_key_id, status, requests, tokens, pages,
                                          provider_cost_cents, platform_fee_cents, cost_cents)
          values (r.account_id, g, date_trunc(g, r.created_at, 'UTC'), r.model, coalesce(r.api_key_id, ''), r.status, 1,
                  r.tokens_used, r.pages_processed, r.provider_cost_cents, r.platform_fee_cents, r.cost_cents)
          on conflict (account_id, grain, period, model, api_key_id, status) do update set
            requests = u.requests + 1,
            tokens = u.tokens + excluded.tokens,
            pages = u.pages + excluded.pages,
            provider_cost_cents = u.provider_cost_cents + excluded.provider_cost_cents,
            platform_fee_cents = u.platform_fee_cents + excluded.platform_fee_cents,
            cost_cents = u.cost_cents + excluded.cost_cents;
        else
          update usage_rollups set
            requests = requests - 1,
            tokens = tokens - r.tokens_used,
            pages = pages - r.pages_processed,
            provider_cost_cents = provider_cost_cents - r.provider_cost_cents,
            platform_fee_cents = platform_fee_cents - r.platform_fee_cents,
            cost_cents = cost_cents - r.cost_cents
          where account_id = r.account_id and grain = g and period = date_trunc(g, r.created_at, 'UTC')
            and model = r.model and api_key_id = coalesce(r.api_key_id, '') and status = r.status;
          delete from usage_rollups
          where account_id = r.account_id and grain = g and period = date_trunc(g, r.created_at, 'UTC')
            and model = r.model and api_key_id = coalesce(r.api_key_id, '') and status = r.status and requests = 0;
        end if;
      end loop;
    end $$`.execute(db);
  await sql`
    create function usage_rollup() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then perform usage_rollup_apply(old, -1); end if;
      if tg_op in ('UPDATE', 'INSERT') then perform usage_rollup_apply(new, 1); end if;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger usage_rollup after insert or update or delete on usage_logs
    for each row execute function usage_rollup()`.execute(db);

  for (const grain of ["hour", "day"]) {
    await sql`
      insert into usage_rollups
      select account_id, ${sql.lit(grain)}, date_trunc(${sql.lit(grain)}, created_at, 'UTC'), model, coalesce(api_key_id, ''), status, count(*),
             sum(tokens_used), sum(pages_processed), sum(provider_cost_cents), sum(platform_fee_cents), sum(cost_cents)
      from usage_logs
      group by 1, 2, 3, 4, 5, 6`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists usage_rollups`.execute(db);
  await sql`alter table usage_logs rename to usage_logs_partitioned`.execute(db);
  await sql`
    create table usage_logs (like usage_logs_partitioned including defaults including constraints)`.execute(db);
  await sql`insert into usage_logs select * from usage_logs_partitioned`.execute(db);
  await sql`drop table usage_logs_partitioned cascade`.execute(db);
  await sql`drop function if exists usage_rollup() cascade`.execute(db);
  await sql`drop function if exists usage_rollup_apply(usage_logs, integer)`.execute(db);
  await sql`alter table usage_logs add primary key (id)`.execute(db);
  await sql`alter table usage_logs add foreign key (account_id) references accounts(id) on delete cascade`.execute(db);
  await sql`create index usage_account_time_idx on usage_logs (account_id, created_at)`.execute(db);
}
