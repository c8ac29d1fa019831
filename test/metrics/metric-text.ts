import type { Registry } from 'prom-client';

/** The value of one sample in a registry's text exposition (`name{labels}`, labels as prom-client writes them), or undefined when absent. */
export async function sampleOf(registry: Registry, series: string): Promise<number | undefined> {
  return sampleInText(await registry.metrics(), series);
}

/** The value of one sample in a text exposition (a registry's, or a node's /metrics page), or undefined when absent. */
export function sampleInText(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
