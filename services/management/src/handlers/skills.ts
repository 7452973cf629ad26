import { createSkill, deleteSkill, getSkill, listSkills, paged, updateSkill } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { addSkill, changeSkill, findSkill, listSkillsPage, removeSkill, type SkillDeps } from '../domain/skills';

export function registerSkillHandlers(bus: ServiceBus, deps: SkillDeps) {
  bus.handle(listSkills, async ({ params, query }) => paged(query, await listSkillsPage(deps, params, query)));
  bus.handle(createSkill, async ({ params, body }) => ({ data: await addSkill(deps, params, body) }));
  bus.handle(getSkill, async ({ params }) => ({ data: await findSkill(deps, params, params.id) }));
  bus.handle(updateSkill, async ({ params, body }) => ({ data: await changeSkill(deps, params, params.id, body) }));
  bus.handle(deleteSkill, async ({ params }) => {
    await removeSkill(deps, params, params.id);
    return reply(204);
  });
}
