/** A refused domain operation (bad organization uid, unknown key, refused ledger entry): its message is for the user. */
export class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DomainError';
  }
}
