import { readFileSync } from 'node:fs';
import { CONFIG_DOC, readmeWithTable } from '../../scripts/config-table';

test('when the config schemas are compared with docs/configuration.md, then its configuration table lists every variable as generated', () => {
  const page = readFileSync(CONFIG_DOC, 'utf8');
  expect(page).toBe(readmeWithTable(page));
});
