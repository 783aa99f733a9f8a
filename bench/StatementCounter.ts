import pg from "pg"

export interface StatementCalls {
  readonly query: string
  readonly calls: number
}

// The counter's own queries mention the view; everything else in this database is the servers' (and the seeding's,
// which never runs inside a measured interval).
const OWN = "%pg_stat_statements%"

/** Statements executed in the benchmark database, from pg_stat_statements (BEGIN and COMMIT included). */
export class StatementCounter {
  private readonly pool: pg.Pool

  constructor(url: string) {
    this.pool = new pg.Pool({ connectionString: url, max: 1 })
    this.pool.on("error", () => undefined) // an idle connection dropped by the server: the next query reconnects
  }

  async total(): Promise<number> {
    const { rows } = await this.pool.query(
      `SELECT coalesce(sum(s.calls), 0)::bigint AS calls FROM pg_stat_statements s
        JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() AND s.query NOT LIKE $1`,
      [OWN]
    )
    return Number(rows[0].calls)
  }

  /** Calls per normalised statement (constants shown as $n), keyed by its queryid. */
  async byStatement(): Promise<Map<string, StatementCalls>> {
    const { rows } = await this.pool.query(
      `SELECT s.queryid::text AS id, s.query, s.calls::bigint AS calls FROM pg_stat_statements s
        JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() AND s.query NOT LIKE $1`,
      [OWN]
    )
    return new Map(rows.map((r: { id: string; query: string; calls: string }) => [r.id, { query: r.query, calls: Number(r.calls) }]))
  }

  end(): Promise<void> {
    return this.pool.end()
  }
}

/** What ran between two readings of byStatement, most frequent first. */
export const statementDelta = (
  before: ReadonlyMap<string, StatementCalls>,
  after: ReadonlyMap<string, StatementCalls>
): Array<StatementCalls> =>
  [...after].flatMap(([id, now]) => {
    const calls = now.calls - (before.get(id)?.calls ?? 0)
    return calls > 0 ? [{ query: now.query, calls }] : []
  }).sort((a, b) => b.calls - a.calls)
