import type { Command } from 'commander';
import { registerLedgerCommand } from './ledger-command.js';

export function registerRepay(program: Command): void {
  registerLedgerCommand(program, 'repay', 'repayment', 'record a repayment (refused, changing nothing, if the amount exceeds the outstanding amount)');
}
