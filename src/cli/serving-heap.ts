import { setFlagsFromString } from 'node:v8';

/**
 * For a process that serves requests: turn off V8's allocation-site
 * pretenuring. Under concurrent load V8 sees most of the objects made at a
 * site survive a young-generation collection (a request's rows are still in
 * use while others are parsed) and from then on allocates that site straight
 * into the old generation, for good. The driver's row objects then go there,
 * pin their field strings through every young collection until the next full
 * one, and the old generation grows by about 1 MB per young collection to
 * some 100 MB between full collections: the service's peak RSS went from
 * about 130 MB to 185–207 MB under the bench (docs/performance.md, Memory).
 * Without it the rows die young; no CPU cost was measurable. Must run before
 * the server starts taking requests.
 */
export function tuneHeapForServing(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
