import { loadModule, parseSync } from 'libpg-query';

/**
 * The rules a statement must keep to run on a distributed PostgreSQL that
 * shards by org_id (Citus, docs/scaling.md "Sharding"), checked on
 * PostgreSQL's own parse tree of the statement text (libpg-query):
 *
 * - every distributed table it reads or writes is constrained by
 *   `org_id = $n` in the same query block (WHERE or JOIN … ON, ANDed), joins
 *   and subqueries included; an INSERT gives org_id as a parameter — so the
 *   statement is a single-shard router query;
 * - no FOR UPDATE / FOR SHARE on a block with a distributed table not so
 *   constrained (Citus refuses it on several shards);
 * - no function call (now(), to_char(), …) in the RETURNING or the
 *   ON CONFLICT DO UPDATE of a distributed table (Citus wants IMMUTABLE there);
 * - no statement reads a session temporary table and a distributed table
 *   together (Citus cannot join a coordinator-local table with shards); an
 *   INSERT … SELECT that moves rows from one to the other is not a join.
 */
export interface ShardingContext {
  readonly distributed: ReadonlySet<string>;
  readonly temporary: ReadonlySet<string>;
}

export type Violation = 'unconstrained' | 'for-update' | 'function-in-returning' | 'temp-join';

export interface Finding {
  readonly rule: Violation;
  readonly detail: string;
  readonly sql: string;
}

let loaded: Promise<void> | undefined;
export function loadParser(): Promise<void> {
  loaded ??= loadModule();
  return loaded;
}

type Node = Record<string, unknown>;

/** The temporary tables a statement creates (CREATE TEMP TABLE, CREATE TEMP TABLE … AS). */
export function temporaryTablesCreatedBy(sql: string): string[] {
  const names: string[] = [];
  if (/^COPY\b/i.test(sql)) return names;
  for (const { stmt } of parseSync(sql).stmts as { stmt: Node }[]) {
    const create = stmt.CreateStmt as Node | undefined;
    const relation = (create?.relation ?? ((stmt.CreateTableAsStmt as Node | undefined)?.into as Node | undefined)?.rel) as Node | undefined;
    if (relation?.relpersistence === 't') names.push(String(relation.relname));
  }
  return names;
}

export function checkStatement(sql: string, context: ShardingContext): Finding[] {
  if (/^COPY\b/i.test(sql)) return [];
  const findings: Finding[] = [];
  const report = (rule: Violation, detail: string) => findings.push({ rule, detail, sql });
  for (const { stmt } of parseSync(sql).stmts as { stmt: Node }[]) {
    const cteNames = new Set<string>();
    walk(stmt, (node) => {
      const cte = node.CommonTableExpr as Node | undefined;
      if (cte) cteNames.add(String(cte.ctename));
    });
    const table = (rangeVar: Node) => (cteNames.has(String(rangeVar.relname)) ? undefined : String(rangeVar.relname));
    const isDistributed = (rangeVar: Node) => context.distributed.has(table(rangeVar) ?? '');

    // Temp ⨝ distributed: every table read anywhere, and the targets of UPDATE and DELETE (INSERT targets are not read).
    const read = new Set<string>();
    walk(stmt, (node) => {
      for (const key of ['SelectStmt', 'UpdateStmt', 'DeleteStmt'] as const) {
        const block = node[key] as Node | undefined;
        if (!block) continue;
        for (const rangeVar of blockRangeVars(block)) {
          const name = table(rangeVar);
          if (name) read.add(name);
        }
      }
    });
    const temps = [...read].filter((name) => context.temporary.has(name));
    const distributed = [...read].filter((name) => context.distributed.has(name));
    if (temps.length > 0 && distributed.length > 0) report('temp-join', `${temps.join(', ')} with ${distributed.join(', ')}`);

    walk(stmt, (node) => {
      const select = node.SelectStmt as Node | undefined;
      if (select) {
        const unconstrained = blockRangeVars(select).filter((rv) => isDistributed(rv) && !constrained(rv, conjunctsOf(select)));
        for (const rangeVar of unconstrained) {
          report(select.lockingClause ? 'for-update' : 'unconstrained', `${rangeVar.relname}${aliasOf(rangeVar) === rangeVar.relname ? '' : ` ${aliasOf(rangeVar)}`}`);
        }
      }
      for (const key of ['UpdateStmt', 'DeleteStmt'] as const) {
        const block = node[key] as Node | undefined;
        if (!block) continue;
        for (const rangeVar of blockRangeVars(block)) {
          if (isDistributed(rangeVar) && !constrained(rangeVar, conjunctsOf(block))) report('unconstrained', `${key === 'UpdateStmt' ? 'UPDATE' : 'DELETE'} ${rangeVar.relname}`);
        }
        if (isDistributed(block.relation as Node)) checkNoFunctions(block.returningList, `RETURNING of ${(block.relation as Node).relname}`, report);
      }
      const insert = node.InsertStmt as Node | undefined;
      if (insert && isDistributed(insert.relation as Node)) {
        const target = String((insert.relation as Node).relname);
        if (!insertGivesOrgParam(insert)) report('unconstrained', `INSERT INTO ${target} without org_id as a parameter`);
        checkNoFunctions(insert.returningList, `RETURNING of ${target}`, report);
        const conflict = insert.onConflictClause as Node | undefined;
        if (conflict) checkNoFunctions([conflict.targetList, conflict.whereClause], `ON CONFLICT DO UPDATE of ${target}`, report);
      }
    });
  }
  return findings;
}

/** The tables of a query block's own FROM (joins included, subqueries not: they are blocks of their own), and an UPDATE's or DELETE's target. */
function blockRangeVars(block: Node): Node[] {
  const found: Node[] = [];
  const visit = (item: unknown) => {
    if (!item || typeof item !== 'object') return;
    const node = item as Node;
    if (node.RangeVar) found.push(node.RangeVar as Node);
    const join = node.JoinExpr as Node | undefined;
    if (join) {
      visit(join.larg);
      visit(join.rarg);
    }
  };
  for (const item of (block.fromClause ?? block.usingClause ?? []) as unknown[]) visit(item);
  if (block.relation) found.push(block.relation as Node);
  return found;
}

/** The ANDed conditions of a block: its WHERE and every JOIN … ON of its FROM. */
function conjunctsOf(block: Node): Node[] {
  const conjuncts: Node[] = [];
  const split = (expression: unknown) => {
    if (!expression || typeof expression !== 'object') return;
    const node = expression as Node;
    const bool = node.BoolExpr as Node | undefined;
    if (bool?.boolop === 'AND_EXPR') for (const arg of bool.args as unknown[]) split(arg);
    else conjuncts.push(node);
  };
  split(block.whereClause);
  const joins = (item: unknown) => {
    const join = (item as Node | undefined)?.JoinExpr as Node | undefined;
    if (!join) return;
    split(join.quals);
    joins(join.larg);
    joins(join.rarg);
  };
  for (const item of (block.fromClause ?? block.usingClause ?? []) as unknown[]) joins(item);
  return conjuncts;
}

function aliasOf(rangeVar: Node): string {
  return String((rangeVar.alias as Node | undefined)?.aliasname ?? rangeVar.relname);
}

/** `alias.org_id = $n` (or unqualified `org_id = $n`, either way round, a cast allowed) among the conjuncts. */
function constrained(rangeVar: Node, conjuncts: Node[]): boolean {
  const alias = aliasOf(rangeVar);
  const isOrgColumn = (node: unknown) => {
    const fields = ((node as Node | undefined)?.ColumnRef as Node | undefined)?.fields as Node[] | undefined;
    const names = fields?.map((field) => (field.String as Node | undefined)?.sval);
    return names !== undefined && names[names.length - 1] === 'org_id' && (names.length === 1 || names[0] === alias);
  };
  const isParam = (node: unknown): boolean => {
    const value = node as Node | undefined;
    if (value?.ParamRef) return true;
    const cast = value?.TypeCast as Node | undefined;
    return cast !== undefined && isParam(cast.arg);
  };
  return conjuncts.some((conjunct) => {
    const expression = conjunct.A_Expr as Node | undefined;
    if (!expression || expression.kind !== 'AEXPR_OP') return false;
    const operator = ((expression.name as Node[])[0]?.String as Node | undefined)?.sval;
    if (operator !== '=') return false;
    return (isOrgColumn(expression.lexpr) && isParam(expression.rexpr)) || (isOrgColumn(expression.rexpr) && isParam(expression.lexpr));
  });
}

/** An INSERT whose org_id column gets a parameter: in every VALUES row, or in the SELECT's target list. */
function insertGivesOrgParam(insert: Node): boolean {
  const columns = ((insert.cols ?? []) as Node[]).map((column) => (column.ResTarget as Node).name);
  const position = columns.indexOf('org_id');
  if (position < 0) return false;
  const select = (insert.selectStmt as Node | undefined)?.SelectStmt as Node | undefined;
  if (!select) return false;
  const isParam = (node: unknown): boolean => {
    const value = node as Node | undefined;
    if (value?.ParamRef) return true;
    const cast = value?.TypeCast as Node | undefined;
    return cast !== undefined && isParam(cast.arg);
  };
  if (select.valuesLists) return (select.valuesLists as Node[]).every((row) => isParam(((row.List as Node).items as unknown[])[position]));
  const target = (select.targetList as Node[] | undefined)?.[position]?.ResTarget as Node | undefined;
  if (isParam(target?.val)) return true;
  // Or a row's org_id (`w.org_id`) where the SELECT holds `w.org_id = $n`: one organization's rows all the same.
  const column = columnPath(target?.val);
  if (column?.[column.length - 1] !== 'org_id') return false;
  let constrained = false;
  walk(select, (node) => {
    const expression = node.A_Expr as Node | undefined;
    const operator = ((expression?.name as Node[] | undefined)?.[0]?.String as Node | undefined)?.sval;
    if (!expression || operator !== '=') return;
    const sides = [expression.lexpr, expression.rexpr];
    if (sides.some((side) => columnPath(side)?.join('.') === column.join('.')) && sides.some(isParam)) constrained = true;
  });
  return constrained;
}

/** A column reference's names (`w.org_id` → ['w', 'org_id']), or undefined for anything else. */
function columnPath(node: unknown): string[] | undefined {
  const reference = (node as Node | undefined)?.ColumnRef as Node | undefined;
  return reference ? ((reference.fields as Node[]) ?? []).map((field) => String((field.String as Node | undefined)?.sval)) : undefined;
}

function checkNoFunctions(where: unknown, place: string, report: (rule: Violation, detail: string) => void): void {
  walk(where, (node) => {
    const call = node.FuncCall as Node | undefined;
    if (call) report('function-in-returning', `${place}: ${(call.funcname as Node[]).map((n) => (n.String as Node).sval).join('.')}()`);
    const value = node.SQLValueFunction as Node | undefined;
    if (value) report('function-in-returning', `${place}: ${String(value.op)}`);
  });
}

function walk(tree: unknown, visit: (node: Node) => void): void {
  if (Array.isArray(tree)) {
    for (const item of tree) walk(item, visit);
    return;
  }
  if (!tree || typeof tree !== 'object') return;
  visit(tree as Node);
  for (const value of Object.values(tree as Node)) walk(value, visit);
}
