// Part of `npm run build`: the compiled store reads its SQL migrations next to itself.
import { cpSync } from 'node:fs';
import { argv } from 'node:process';

const outDir = argv[2] ?? 'dist';
cpSync('src/store/migrations', `${outDir}/store/migrations`, { recursive: true });
