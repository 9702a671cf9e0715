import { quickstart } from './quickstart';

test('the README example runs: state moves with the actor and the new owner serves it', async () => {
  expect(await quickstart()).toEqual({ before: 2, after: 3, owner: 'node-b' });
});
