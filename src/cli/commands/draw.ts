import type { Command } from 'commander';
import { registerLedgerCommand } from './ledger-command.js';

export function registerDraw(program: Command): void {
  registerLedgerCommand(program, 'draw', 'drawdown', 'draw down a credit limit (refused, changing nothing, if the amount exceeds its balance)');
}
