import { ListClient, type QueryValue } from './resource-client.js';

/**
 * A list served with page numbers only (`page`, no `cursor`): a webhook
 * endpoint's delivery attempts. `listAll` starts at page 1 and follows each
 * `next` link; an item added meanwhile shifts the pages, so one may be
 * returned twice (a cursor walk does not have that: the other collections).
 */
export class NumberedListClient<TRecord = Record<string, unknown>, TParams extends { [K in keyof TParams]?: QueryValue } = Record<string, QueryValue>> extends ListClient<
  TRecord,
  TParams
> {
  protected override walkStart(filters: { [name: string]: QueryValue }): { [name: string]: QueryValue } {
    return filters;
  }
}
