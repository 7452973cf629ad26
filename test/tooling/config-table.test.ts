import { readFileSync } from 'node:fs';
import { README, readmeWithTable } from '../../scripts/config-table';

test('when the config schemas are compared with the README, then its configuration table lists every variable as generated', () => {
  const readme = readFileSync(README, 'utf8');
  expect(readme).toBe(readmeWithTable(readme));
});
